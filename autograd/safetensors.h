// autograd/safetensors.h — moved to autograd/io/safetensors.h in 0.2; this forward keeps programs that include the
// old path compiling for one release. New code includes "autograd/io/safetensors.h".
#pragma once
#include "autograd/io/safetensors.h"
