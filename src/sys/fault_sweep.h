// The sweep's side of the injector (fault.h), beyond arming one failure:
// the errnos of each kind of call (one table), and a second failure in the
// same case, in the error path the first one started (double faults).
// Test-only like fault.h, and apart from it so that the seam every wrapper
// includes stays as small as it is. Implemented in fault.cpp.
#pragma once

#include <cstdint>
#include <span>

#include "sys/fault.h"

namespace doorbell::sys::fault {

// Every errno the manual page of `call` lists for the call as the library
// makes it (its flags, its file types), plus EPERM, EBADF and EINVAL
// wherever the kernel can return them for that call at all; EINTR first.
// kernel_can_return() says which of them the kernel can really return
// there (those must be handled); the rest are "cannot happen" (a sweep
// accepts the library's abort or any clear report for them).
std::span<const int> manual_errnos(Call call) noexcept;

// Arms like fail_nth_call(first, nth, error) and, once that call has
// failed, fails the second_nth call of kind `second` counted from there
// (a call of the error path or the clean-up the first failure started)
// with second_error, once.
void fail_nth_call_then(Call first, uint32_t nth, int error, Call second, uint32_t second_nth,
                        int second_error) noexcept;

// Calls of one kind made after the first injection fired (the failed call
// excluded), since the last arm: what a double-fault sweep can fail second.
uint32_t calls_after_injection(Call call) noexcept;

// What the second failure did (fired false: it did not happen).
Injection second_injection() noexcept;

}  // namespace doorbell::sys::fault
