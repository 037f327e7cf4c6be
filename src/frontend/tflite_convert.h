/* tflite_convert.h: the converters of tflite_convert_image.c that the
 * table in tflite_convert.c names (each a tfl_convert_fn). */
#ifndef KILN_FRONTEND_TFLITE_CONVERT_H
#define KILN_FRONTEND_TFLITE_CONVERT_H

#include "tflite_import.h"

#define TFL_CVT(name) KILN_HIDDEN int name(tfl_imp *T, const int *in, int *outs)
TFL_CVT(tfl_cvt_resize_bilinear);
TFL_CVT(tfl_cvt_resize_nearest);
TFL_CVT(tfl_cvt_depth_to_space);
TFL_CVT(tfl_cvt_space_to_depth);
TFL_CVT(tfl_cvt_transpose_conv);
TFL_CVT(tfl_cvt_prelu);
TFL_CVT(tfl_cvt_tile);
TFL_CVT(tfl_cvt_broadcast_to);
TFL_CVT(tfl_cvt_fill);
TFL_CVT(tfl_cvt_zeros_like);
TFL_CVT(tfl_cvt_add_n);
TFL_CVT(tfl_cvt_arg_max);
TFL_CVT(tfl_cvt_arg_min);
TFL_CVT(tfl_cvt_floor_div);
TFL_CVT(tfl_cvt_floor_mod);

#endif
