// Host emulation of a warp's lanes and their shuffles, so that CI runs the kernels' cooperative
// routines (the pair and quad lane forms in host_lanes.cpp, the warp's shared inversion mod n in
// host_ecdsa.cpp) without a GPU. Include it before the kernel sources: it defines threadIdx and
// the shuffles they use.
//
// Each lane runs on a context of its own (ucontext) and the lanes take turns, round robin, at
// every shuffle: a lane posts its value, yields, and reads its source lane's value when its turn
// comes again. Every lane posts before any reads, so a read always sees the whole exchange; posts
// alternate between two buffers, so a lane that runs ahead to the next shuffle cannot overwrite
// values another lane has yet to read. Lanes that disagreed on the order of their shuffles would
// read each other's unrelated values, and run_lanes reports lanes that made different numbers.
#pragma once
#include <ucontext.h>

#include <vector>

#include "types.h"

namespace {  // internal linkage: build.rs links several builds that include this file
constexpr int kWarpLanes = 32;
struct WarpIndex {
  unsigned x;
};
// Per OS thread (tests run in parallel); the lanes of one emulated warp share their thread.
thread_local WarpIndex warp_index{0};
thread_local ucontext_t warp_scheduler;
thread_local ucontext_t warp_context[kWarpLanes];
thread_local unsigned warp_posted[2][kWarpLanes];
thread_local unsigned warp_calls[kWarpLanes];
thread_local bool warp_finished[kWarpLanes];
thread_local int warp_count = 0;
thread_local void (*warp_body)(int);

// Posts v, lets the other lanes post theirs, then reads the value lane src posted.
inline u32 warp_exchange(u32 v, unsigned src) {
  const unsigned me = warp_index.x;
  const unsigned buf = warp_calls[me]++ & 1u;
  warp_posted[buf][me] = v;
  swapcontext(&warp_context[me], &warp_scheduler);
  return warp_posted[buf][src % (unsigned)warp_count];
}

void warp_lane_main(int lane) {
  warp_index.x = (unsigned)lane;
  warp_body(lane);
  warp_finished[lane] = true;
}

// Runs body(lane) on lanes 0 .. n - 1 (n <= 32) as one warp. False when the lanes made different
// numbers of shuffles.
bool run_lanes(int n, void (*body)(int), size_t stack_bytes) {
  warp_count = n;
  warp_body = body;
  std::vector<std::vector<char>> stacks(n, std::vector<char>(stack_bytes));
  for (int lane = 0; lane < n; lane++) {
    warp_finished[lane] = false;
    warp_calls[lane] = 0;
    getcontext(&warp_context[lane]);
    warp_context[lane].uc_stack.ss_sp = stacks[lane].data();
    warp_context[lane].uc_stack.ss_size = stacks[lane].size();
    warp_context[lane].uc_link = &warp_scheduler;
    makecontext(&warp_context[lane], (void (*)())warp_lane_main, 1, lane);
  }
  for (bool running = true; running;) {
    running = false;
    for (int lane = 0; lane < n; lane++) {
      if (warp_finished[lane]) continue;
      warp_index.x = (unsigned)lane;
      swapcontext(&warp_scheduler, &warp_context[lane]);
      running = running || !warp_finished[lane];
    }
  }
  warp_index.x = 0;
  for (int lane = 1; lane < n; lane++)
    if (warp_calls[lane] != warp_calls[0]) return false;
  return true;
}
}  // namespace

#define threadIdx (warp_index)
static inline u32 __shfl_xor_sync(u32, u32 v, int lane_mask) {
  return warp_exchange(v, threadIdx.x ^ (unsigned)lane_mask);
}
static inline u32 __shfl_sync(u32, u32 v, int src) { return warp_exchange(v, (unsigned)src); }
