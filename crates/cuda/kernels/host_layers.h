// The kernel layers for the host builds (host_shim.cpp, host_lanes.cpp, host_ecdsa.cpp), in the
// order src/kernel.rs assembles them for NVRTC: each layer relies only on those before it.
// host_warp.h comes first: it declares threadIdx and the shuffles that the lane and warp routines
// name (emulated on the host). The generated cs_curve.h is found on the include path of each build.
#pragma once

#include "host_warp.h"
#include "cs_curve.h"
#include "field.cuh"
#include "lanes.cuh"
#include "scalar.cuh"
#include "point.cuh"
#include "ecmult.cuh"
#include "sm2.cuh"
#include "ecdsa.cuh"
