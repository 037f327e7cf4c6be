# embed.cmake: texts the generated C carries, taken at build time from the
# one header that defines each of them, so the two cannot drift: the module
# ABI's declarations (src/runtime/module_abi.h, between its markers) and the
# integer division rule (src/base/intdiv.h). Included from CMakeLists.txt
# before libkiln's targets; appends the generated .c files to KILN_SOURCES.
set(KILN_EMBED_DIR ${CMAKE_BINARY_DIR}/generated/embed)
file(MAKE_DIRECTORY ${KILN_EMBED_DIR})

# kiln_embed_text(IN OUT SYMBOL [BEGIN marker END marker])
function(kiln_embed_text in out symbol)
  cmake_parse_arguments(E "" "BEGIN;END" "" ${ARGN})
  set(markers)
  if(E_BEGIN)
    set(markers "-DBEGIN=${E_BEGIN}" "-DEND=${E_END}")
  endif()
  add_custom_command(
    OUTPUT ${KILN_EMBED_DIR}/${out}
    COMMAND ${CMAKE_COMMAND} -DSRC=${CMAKE_SOURCE_DIR}/${in} -DOUT=${KILN_EMBED_DIR}/${out}
            -DSYMBOL=${symbol} ${markers} -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/${in} ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    COMMENT "Embedding ${in} as ${symbol}"
    VERBATIM)
  set(KILN_SOURCES ${KILN_SOURCES} ${KILN_EMBED_DIR}/${out} PARENT_SCOPE)
endfunction()

kiln_embed_text(src/runtime/module_abi.h module_abi_text.c codegen_module_abi_text
                BEGIN "begin module ABI text" END "end module ABI text")
kiln_embed_text(src/base/intdiv.h intdiv_text.c codegen_intdiv_text)
# the oneDNN glue every dnnl external function carries (src/contrib/dnnl.c)
kiln_embed_text(src/contrib/dnnl_rt.h dnnl_rt_text.c contrib_dnnl_rt_text)
