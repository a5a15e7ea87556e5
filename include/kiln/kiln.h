// kiln: arrays, operations, tracing and compilation. Include this header.
#pragma once

#include "kiln/array.h"
#include "kiln/cache.h"
#include "kiln/control.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/grad.h"
#include "kiln/graph.h"
#include "kiln/io.h"
#include "kiln/jit.h"
#include "kiln/linalg.h"
#include "kiln/nn.h"
#include "kiln/ops.h"
#include "kiln/random.h"
#include "kiln/telemetry.h"
#include "kiln/tree.h"
#include "kiln/vmap.h"
