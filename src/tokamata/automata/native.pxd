# C types for the Cython build of native.py (see CMakeLists.txt); the .py file is the source
# and runs unchanged without them.
cimport cython
from .derivatives cimport Expr


@cython.locals(top=Expr, c=Expr, kind=cython.int, stack=list, order=list, records=list, generation=cython.longlong, mark=cython.longlong,
               memo=cython.longlong, in_batch=cython.longlong,
               serial=cython.longlong, ref=cython.longlong, missing=cython.bint,
               CONCAT=cython.int, ALT=cython.int, REPEAT=cython.int, TAGGED=cython.int, BYTES=cython.int,
               UTF8=cython.int, AND=cython.int, DIFF=cython.int, UNTIL=cython.int, DECMOD=cython.int,
               SUBSTRING=cython.int, NOTHING=cython.int, EPSILON=cython.int)
cpdef long long _import(object bridge, list roots) except? -1
