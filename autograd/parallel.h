// autograd/parallel.h — moved to autograd/runtime/parallel.h in 0.2; this forward keeps programs that include the
// old path compiling for one release. New code includes "autograd/runtime/parallel.h".
#pragma once
#include "autograd/runtime/parallel.h"
