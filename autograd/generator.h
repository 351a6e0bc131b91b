// autograd/generator.h — moved to autograd/random/generator.h in 0.2; this forward keeps programs that include the
// old path compiling for one release. New code includes "autograd/random/generator.h".
#pragma once
#include "autograd/random/generator.h"
