// The three tiers of errors (see STYLE.md):
//  - set-up failures throw std::system_error carrying errno (throw_errno);
//  - hot paths are noexcept;
//  - kernel results that cannot happen end the process after an
//    async-signal-safe message on stderr (fatal).
#pragma once

#include <cerrno>
#include <string_view>
#include <system_error>

namespace doorbell::sys {

// Throws std::system_error(errno, what). Call right after the failing call.
[[noreturn]] void throw_errno(std::string_view what);
[[noreturn]] void throw_errno(int error, std::string_view what);

// Writes "doorbell: fatal: <what>: errno N\n" with write(2) and aborts.
// Async-signal-safe.
[[noreturn]] void fatal(const char* what, int error = 0) noexcept;

// Writes a message to stderr with write(2) only. Async-signal-safe.
void write_stderr(const char* message) noexcept;

}  // namespace doorbell::sys
