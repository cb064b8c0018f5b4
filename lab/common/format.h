// One way to write a duration and a ratio, for every surface of the lab: the
// terminal table, the HTML report, the guide's checked figures, `doorbell
// trace` and `doorbell partition`. Text that quotes the same figure in two
// places must read the same.
//
//   format_duration(3100)   -> "3.10 µs"
//   format_duration(0.47)   -> "0.47 ns"
//   format_ratio(552.3)     -> "552x"
//   format_ratio(3.31)      -> "3.31x"
//   format_ratio(1.0046)    -> "1.00x"  (three figures, never "1x")
//   format_ratio_words(0.683, "Asio", "our signalfd channel")
//                           -> "Asio 1.46x faster than our signalfd channel"
//
// A value that is not finite (NaN, infinity) is written "-": callers that can
// produce one (a ratio over a zero denominator) must say why beside it.
#pragma once

#include <string>

namespace doorbell::lab {

// Nanoseconds as ns, µs, ms or s: two decimals below 10 of a unit, one
// below 1000 of µs and ms ("120.8 µs"), none for ns from 10 up. The unit is
// chosen from the value as written, so a value that rounds up to the next
// unit is written in it (999.7 ns -> "1.00 µs", 9999.7 ns -> "10.0 µs",
// 1 ms -> "1.00 ms", never "0.0 s"). Seconds: three significant figures
// ("1.50 s", "12.3 s", "150 s"). The one spelling of a duration in the lab
// and the CLI's messages (a watchdog's limit of 0.001 s reads "1.00 ms").
std::string format_duration(double ns);

// A ratio as "N.NNx" (three significant figures, trailing zeros kept:
// 1.0046 -> "1.00x", 5 -> "5.00x"), "NNNx" from 100 up.
std::string format_ratio(double ratio);

// A ratio of two times, subject's over other's, in words that read right on
// both sides of 1: above 1 the subject is slower ("Asio 1.46x slower than
// X"), below 1 faster, by 1/ratio ("Asio 1.46x faster than X" for 0.683);
// within 1% of 1 "Asio about as fast as X". "-" when not finite or not
// above 0.
std::string format_ratio_words(double ratio, const std::string& subject, const std::string& other);

}  // namespace doorbell::lab
