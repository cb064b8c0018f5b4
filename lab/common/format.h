// One way to write a duration and a ratio, for every surface of the lab: the
// terminal table, the HTML report, the guide's checked figures, `doorbell
// trace` and `doorbell partition`. Text that quotes the same figure in two
// places must read the same.
//
//   format_duration(3100)   -> "3.10 µs"
//   format_duration(0.47)   -> "0.47 ns"
//   format_ratio(552.3)     -> "552x"
//   format_ratio(3.31)      -> "3.31x"
//
// A value that is not finite (NaN, infinity) is written "-": callers that can
// produce one (a ratio over a zero denominator) must say why beside it.
#pragma once

#include <string>

namespace doorbell::lab {

// Nanoseconds as ns, µs, ms or s with three significant figures where the
// unit allows (two decimals below 10 ns).
std::string format_duration(double ns);

// A ratio as "N.NNx" (three significant figures), "NNNx" from 100 up.
std::string format_ratio(double ratio);

}  // namespace doorbell::lab
