// Compiled by the ctest `stage_rule` with the renderer stage's include root only (cmake/stages.cmake): the IR
// below it is found, the engine above it is not. (.cc: not part of tg_tests.)
#include "uop/uop.h"
#include "engine/realize.h"
