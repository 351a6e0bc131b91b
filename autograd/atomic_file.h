// autograd/atomic_file.h — moved to autograd/io/atomic_file.h in 0.2; this forward keeps programs that include the
// old path compiling for one release. New code includes "autograd/io/atomic_file.h".
#pragma once
#include "autograd/io/atomic_file.h"
