# C types for the Cython build of deadline.py (see CMakeLists.txt); the .py file is the source
# and runs unchanged without them. The check runs ~20-150 times per compile: typed fields
# keep it to a few C operations on the calls that do not read the clock.
cimport cython

cdef class _Deadline:
    cdef public double started
    cdef public double limit
    cdef public int gc
    cdef public long long calls

@cython.locals(deadline=_Deadline, calls=cython.longlong, elapsed=cython.double)
cpdef check_deadline()
