#pragma once
// tinygrad.cpp: the umbrella header.
#include "tg/context.h"
#include "tg/counters.h"
#include "tg/dtype.h"
#include "tg/error.h"
#include "tg/jit.h"
#include "tg/nn.h"
#include "tg/progress.h"
#include "tg/tensor.h"
