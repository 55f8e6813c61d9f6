# C types for the Cython build of derivatives.py (see CMakeLists.txt); the .py file is the
# source and runs unchanged without them. Expr's fields hold what the Python class stores.
cimport cython

cdef class Expr:
    cdef public int kind
    cdef public tuple args
    cdef public bint nullable
    cdef public object id
    cdef public dict _derivatives
    cdef public object _cuts
    cdef public object _highs
    cdef public object _ends
    cdef public object _longest
    cdef public object _infinite
    cdef public object _leaf_cuts
    cdef public object _first
    cdef public long long _native
    cdef object __weakref__

cpdef Expr _make(int kind, tuple args, bint nullable)
@cython.locals(child=Expr, item=Expr, inner=Expr, first=Expr, second=Expr)
cdef void _set_facts(Expr node, int kind, tuple args)
cpdef Expr concat(Expr first, Expr second)
cpdef Expr derivative(Expr node, int byte)
