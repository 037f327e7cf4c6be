"""The global function registry, both ways (TVM's register_func): a Python
function registered by name and called from C, a C function called from
Python, a Python callback handed to C as a value, and errors crossing the
boundary with their stack traces.

    PYTHONPATH=python python examples/python/register_func.py
"""

import numpy as np

import kiln


@kiln.register_func("demo.scale")
def scale(arr, factor):
    """Python, callable from C as "demo.scale"."""
    return arr * factor


# 1. call it by name: the call goes through C's kiln_func_call
f = kiln.get_global_func("demo.scale")
print("demo.scale from the registry:", f(np.arange(4, dtype="float32"), 2.5))

# 2. C calls Python: "kiln.call" (a C function) calls the function value it
#    is given with the other arguments, here our Python function
call = kiln.get_global_func("kiln.call")
print("kiln.call(demo.scale, ...):", call(f, np.ones(3, "float32"), 4.0))

# 3. a C function from Python, with a graph value
g = kiln.Graph()
x = g.var("x", (2, 2))
g.set_outputs([kiln.op.nn.relu(x)])
print("kiln.graph.print (C):", kiln.get_global_func("kiln.graph.print")(g).splitlines()[1])

# 4. errors cross both ways
@kiln.register_func("demo.fails")
def fails(v):
    raise ValueError(f"{v} is not acceptable")


try:
    call(kiln.get_global_func("demo.fails"), 42)
except kiln.KilnError as e:
    assert "42 is not acceptable" in str(e) and "Traceback" in str(e)
    print("a Python error raised under C came back as KilnError:", str(e).splitlines()[-1])
try:
    kiln.get_global_func("kiln.graph.run_pass")(g, "NoSuchPass")
except kiln.KilnError as e:
    assert e.c_trace
    print("a C error came back with its message:", str(e)[:60], "...")
    print("and the C stack where it was raised:", e.c_trace.splitlines()[0])
print("registered functions:", ", ".join(n for n in kiln.list_global_func_names()
                                         if n.startswith(("demo.", "kiln."))))
