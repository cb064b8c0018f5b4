// Test-only injection points of the signalchannel scenarios
// (lab/scenarios/signalchannel.cpp). Never set outside tests.
#pragma once

#include <atomic>

namespace doorbell::lab::signalchannel_testing {

// Signals the libuv receiver sends to its own thread inside its stop
// callback, before it stops its uv_signal_t: libuv's handler writes each to
// the loop's self-pipe, and the loop, stopping, never reads them. This is
// what a flood row sees when its receiver stops with sends still in the
// method's pipe (a receiver that did not run for the row's quiet window: a
// sanitizer's deferred handlers, a loaded machine). The sends count as sent.
// 0, the default: none.
inline std::atomic<int> libuv_sends_in_stop{0};

}  // namespace doorbell::lab::signalchannel_testing
