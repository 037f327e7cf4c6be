# gen_runtime_fixtures.py: writes the small .npy/.npz fixtures that
# tests/unit/test_runtime_npy.c reads. Not run by the tests; kept so the
# fixtures can be regenerated: python3 gen_runtime_fixtures.py (needs numpy).
import io
import struct
import zipfile
import zlib

import numpy as np

np.save("rt_f32_2x3.npy", np.arange(6, dtype="<f4").reshape(2, 3) * 0.5)
np.save("rt_f64_fortran.npy", np.asfortranarray(np.arange(12, dtype="<f8").reshape(3, 4)))
np.save("rt_i64_scalar.npy", np.array(-42, dtype="<i8"))
np.save("rt_bool.npy", np.array([True, False, True, True]))
np.save("rt_u8.npy", np.array([0, 1, 255], dtype="u1"))
np.save("rt_i8_fortran3d.npy", np.asfortranarray(np.arange(24, dtype="i1").reshape(2, 3, 4)))
np.save("rt_f16.npy", np.array([1.0, -2.5, 65504.0], dtype="<f2"))
np.save("rt_i32_empty.npy", np.zeros((0, 3), dtype="<i4"))
np.save("rt_f32_be.npy", np.arange(3, dtype=">f4"))
np.save("rt_object.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
for v in [(2, 0), (3, 0)]:
    with open("rt_i32_v%d.npy" % v[0], "wb") as f:
        np.lib.format.write_array(f, np.arange(5, dtype="<i4") - 2, version=v)

a = np.arange(6, dtype="<f4").reshape(2, 3)
b = np.array([[1, 2], [3, 4]], dtype="<i8")
np.savez("rt_stored.npz", a=a, b=b)
np.savez_compressed("rt_deflated.npz", a=a, b=b)


def npy_bytes(arr):
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def zip64_archive(members):
    """A ZIP64 archive written by hand: every size and offset in the central
    directory goes through the 0x0001 extra field, the local headers carry
    one too, and the end records are ZIP64 with 0xffff sentinels."""
    out = bytearray()
    central = bytearray()
    for name, data, method in members:
        comp = data
        if method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            comp = c.compress(data) + c.flush()
        crc = zlib.crc32(data)
        off = len(out)
        fname = name.encode()
        lextra = struct.pack("<HHQQ", 1, 16, len(data), len(comp))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, method, 0, 0x21, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(fname), len(lextra))
        out += fname + lextra + comp
        cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(comp), off)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x032D, 45, 0, method, 0,
                               0x21, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(fname), len(cextra), 0,
                               0, 0, 0o100644 << 16, 0xFFFFFFFF)
        central += fname + cextra
    cd_off = len(out)
    out += central
    e64 = len(out)
    n = len(members)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x032D, 45, 0, 0, n, n, len(central),
                       cd_off)
    out += struct.pack("<IIQI", 0x07064B50, 0, e64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(out)


z = zip64_archive([("x.npy", npy_bytes(np.arange(4, dtype="<f8")), 8),
                   ("y.npy", npy_bytes(np.array([7, 8, 9], dtype="<i4")), 0)])
with open("rt_zip64.npz", "wb") as f:
    f.write(z)
# Check that numpy and zipfile read it back.
with zipfile.ZipFile("rt_zip64.npz") as zf:
    assert zf.testzip() is None
with np.load("rt_zip64.npz") as d:
    assert list(d["x"]) == [0.0, 1.0, 2.0, 3.0] and list(d["y"]) == [7, 8, 9]
