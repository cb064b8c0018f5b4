// Finding a program the way execvp(3) does, without running it.
#pragma once

#include <optional>
#include <string>

namespace doorbell::sys {

// The executable `program` names: itself when it has a slash (and is
// executable), else the first executable `dir/program` along $PATH (an
// empty entry is the current directory; without $PATH, the C library's
// default "/usr/local/bin:/usr/bin:/bin"). nullopt when there is none.
std::optional<std::string> find_program(const std::string& program);

}  // namespace doorbell::sys
