// The generated CLI battery (issue 26): every option of every command, read
// from the binary's own command tree (`doorbell --dump-cli-tree`, hidden),
// tried with a battery of values for its type through the real binary, each
// run with a timeout. Nothing here lists options: an option added tomorrow
// is tried without anyone thinking of it.
//
// Values, by the type an option declares (apps/doorbell/options.h):
//   numbers (INT, UINT, FLOAT: a declared range is required) 0, -1, nan,
//     inf, 1e300, 2^63, '', a directory, a missing path, non-UTF-8 bytes,
//     and the range's minimum (a timeout: 30 s, within its range)
//   one of a set (IsMember): each member, and the text values below
//   FILE (read): '', a directory, a missing path, /dev/null, non-UTF-8
//   OUTFILE (written), OUTDIR: '', a directory / a file in the way, a
//     missing directory, an unwritable place (/proc), a new path with a
//     non-UTF-8 name, a new path; '-' for OUTFILE|-
//   SCENARIO, TEXT: '', a directory, a missing path, non-UTF-8, '0'
//   flags: given once
// Each case runs its command's quick base (below) with the option set to
// the value, plus what the option needs (CLI11 needs(); for a flag, the
// options that need it), minus what it excludes. Requirements:
//   a legal value (in range, a member, a usable path): exit 0 within the
//     timeout, and a written path exists afterwards;
//   any other value: exit 1 or 2 with stderr one line that names the
//     option (a positional: its name, or the value given);
//   free text (SCENARIO, TEXT): either of those;
//   never a signal, never a hang.
// The number of option-value cases that ran is printed, per command.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/run_program.h"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Json = nlohmann::json;

const std::string kSource = DOORBELL_SOURCE_DIR;
const std::string kNonUtf8 = "\xff\xfe\xc3";

// ------------------------------------------------------------ the tree

struct Option {
  std::string command;  // "partition run"
  Json spec;            // one entry of the dump's "options"
  std::string name() const { return spec["name"]; }
  std::string type() const { return spec["type"]; }
  bool positional() const { return spec["positional"]; }
  bool flag() const { return spec["flag"]; }
};

const Json& tree() {
  static const Json t = [] {
    const auto r = doorbell::test::run_doorbell({"--dump-cli-tree"}, {.timeout = 60s});
    if (!r.success()) return Json();
    return Json::parse(r.out, nullptr, false);
  }();
  return t;
}

void collect(const Json& node, std::vector<std::pair<std::string, const Json*>>& out) {
  out.emplace_back(node["path"].get<std::string>(), &node);
  for (const auto& sub : node["subcommands"]) collect(sub, out);
}

std::vector<std::pair<std::string, const Json*>> commands() {
  std::vector<std::pair<std::string, const Json*>> out;
  if (tree().is_object()) collect(tree(), out);
  return out;
}

bool numeric(const std::string& type) {
  return type == "INT" || type == "UINT" || type == "FLOAT";
}

// ------------------------------------------------------------ the bases

// Where a case runs: its own directory, and the shared fixtures.
struct Place {
  std::string dir;       // the case's own, empty, writable directory
  std::string fixtures;  // schedule.toml, a regular file, a guide copy per case
};

std::string fill(std::string text, const Place& place) {
  auto replace = [&](const std::string& key, const std::string& value) {
    for (std::size_t at; (at = text.find(key)) != std::string::npos;)
      text.replace(at, key.size(), value);
  };
  replace("{tmp}", place.dir);
  replace("{fixtures}", place.fixtures);
  replace("{source}", kSource);
  replace("{pid}", std::to_string(::getpid()));
  return text;
}

// A command's quick base: the options (and positionals, by name) that make
// it finish in moments. Every command in the tree needs one
// (CliBattery.EveryCommandHasABase).
using Base = std::vector<std::pair<std::string, std::vector<std::string>>>;
const std::map<std::string, Base>& bases() {
  static const std::map<std::string, Base> b = {
      {"", {}},
      {"bench",
       {{"--filter", {"ladder/atomic_store_load_acq_rel"}},
        {"--quick", {}},
        {"--repeat", {"1"}},
        {"--no-progress", {}},
        {"--json", {"{tmp}/b.json"}}}},
      {"report",
       {{"RESULTS.json", {"{source}/tests/data/small_results.json"}},
        {"--output", {"{tmp}/r.html"}}}},
      {"guide",
       {{"results", {"{source}/docs/results/kvm-firecracker-intel-xeon-2vcpu.json"}},
        {"guide", {"{tmp}/guide.md"}}}},
      {"trace", {{"--duration", {"0.2"}}}},
      {"inspect", {{"PID", {"{pid}"}}, {"--window-ms", {"10"}}}},
      {"partition", {}},
      {"partition run", {{"schedule", {"{fixtures}/schedule.toml"}}, {"--frames", {"2"}}}},
      {"partition check", {{"schedule", {"{fixtures}/schedule.toml"}}}},
      {"help", {}},
      {"completion", {{"shell", {"bash"}}}},
  };
  return b;
}

// A legal value for a positional that no base gives.
const std::map<std::string, std::string>& positional_fixtures() {
  static const std::map<std::string, std::string> f = {
      {"B.json", "{source}/tests/data/small_results_b.json"},
      {"command", "bench"},
  };
  return f;
}

// ------------------------------------------------------------ values

enum class Expect { legal, illegal, either };

struct Value {
  std::string text;
  Expect expect;
  std::string made;  // legal and written: this path must exist afterwards
  bool to_stdout = false;
};

std::string format_number(double v) {
  if (std::nearbyint(v) == v && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.17g}", v);
}

// Whether `text` is a value of `type` within [lo, hi] (CLI11's conversion:
// integers in decimal, floats by strtod; 2^63 overflows an int64).
bool in_range(const std::string& text, const std::string& type, double lo, double hi) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  if (type == "FLOAT") {
    const double v = std::strtod(text.c_str(), &end);
    return *end == '\0' && errno == 0 && std::isfinite(v) && v >= lo && v <= hi;
  }
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0) return false;
  if (type == "UINT" && v < 0) return false;
  return static_cast<double>(v) >= lo && static_cast<double>(v) <= hi;
}

std::vector<Value> values_for(const Option& o, std::string& problem) {
  const std::string type = o.type();
  std::vector<Value> v;
  const std::vector<std::string> texts = {"", "{tmp}", "{tmp}/missing/x", kNonUtf8};
  if (numeric(type)) {
    if (!o.spec["range"].is_array()) {
      problem = o.command + " " + o.name() + " takes a number (" + type +
                ") but declares no range: give it ->check(number_in(MIN, MAX))";
      return {};
    }
    const double lo = o.spec["range"][0], hi = o.spec["range"][1];
    std::set<std::string> seen;
    for (std::string t :
         {std::string("0"), std::string("-1"), std::string("nan"), std::string("inf"),
          std::string("1e300"), std::string("9223372036854775808")}) {
      v.push_back({t, in_range(t, type, lo, hi) ? Expect::legal : Expect::illegal});
      seen.insert(t);
    }
    for (const auto& t : texts) v.push_back({t, Expect::illegal});
    // The legal value: the minimum (a timeout: generous, within range).
    double legal = lo;
    if (o.name().find("timeout") != std::string::npos) legal = std::clamp(30.0, lo, hi);
    std::string t = format_number(legal);
    if (type != "FLOAT" && std::nearbyint(legal) != legal) t = format_number(std::ceil(legal));
    if (!seen.count(t)) v.push_back({t, Expect::legal});
    return v;
  }
  if (!o.spec["choices"].empty()) {
    for (const auto& c : o.spec["choices"]) v.push_back({c.get<std::string>(), Expect::legal});
    for (const auto& t : texts) v.push_back({t, Expect::illegal});
    v.push_back({"0", Expect::illegal});
    return v;
  }
  if (type == "FILE") {
    for (const auto& t : texts) v.push_back({t, Expect::illegal});
    v.push_back({"/dev/null", Expect::illegal});  // empty: no schedule, results or guide
    return v;
  }
  if (type == "OUTFILE" || type == "OUTFILE|-") {
    v.push_back({"", Expect::illegal});
    v.push_back({"{tmp}", Expect::illegal});
    v.push_back({"{tmp}/missing/x.out", Expect::illegal});
    v.push_back({"/proc/doorbell-battery.out", Expect::illegal});
    v.push_back({"{tmp}/" + kNonUtf8 + ".out", Expect::legal, "{tmp}/" + kNonUtf8 + ".out"});
    v.push_back({"{tmp}/new.out", Expect::legal, "{tmp}/new.out"});
    if (type == "OUTFILE|-") v.push_back({"-", Expect::legal, "", true});
    return v;
  }
  if (type == "OUTDIR") {
    v.push_back({"", Expect::illegal});
    v.push_back({"{fixtures}/a-file", Expect::illegal});
    v.push_back({"/proc/doorbell-battery", Expect::illegal});
    v.push_back({"{tmp}/" + kNonUtf8, Expect::legal, "{tmp}/" + kNonUtf8});
    v.push_back({"{tmp}/new-dir/sub", Expect::legal, "{tmp}/new-dir/sub"});
    return v;
  }
  if (type == "SCENARIO" || type == "TEXT") {
    for (const auto& t : texts) v.push_back({t, Expect::either});
    v.push_back({"0", Expect::either});
    return v;
  }
  problem = o.command + " " + o.name() + " has a type the battery does not know: '" + type +
            "' (apps/doorbell/options.h lists them)";
  return {};
}

// A legal value of another option, to satisfy needs().
std::optional<std::string> legal_value(const Option& o, const Place& place) {
  if (o.flag()) return std::string();
  std::string problem;
  for (const auto& v : values_for(o, problem))
    if (v.expect == Expect::legal && !v.to_stdout) return fill(v.text, place);
  return std::nullopt;
}

// ------------------------------------------------------------ one case

struct Case {
  std::string command;
  std::string option;
  std::string value_shown;
  std::vector<std::string> args;
  Value value;
  std::string dir;  // its own directory
};

std::string shown(const std::string& text) {
  std::string out;
  for (unsigned char c : text)
    out += c < 0x20 || c >= 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, char(c));
  return out.empty() ? "''" : out;
}

const Option* find_option(const std::vector<Option>& options, const std::string& name) {
  for (const auto& o : options)
    if (o.name() == name) return &o;
  return nullptr;
}

// The command line of a case: the command's base with `tested` set to
// `value` (nullopt: a flag), its needs added and its exclusions dropped.
std::vector<std::string> command_line(const std::string& command, const std::vector<Option>& all,
                                      const Option& tested, const std::optional<std::string>& value,
                                      const Place& place, std::string& problem) {
  std::vector<std::string> args;
  {
    std::istringstream words(command);
    for (std::string w; words >> w;) args.push_back(w);
  }
  Base base = bases().at(command);
  std::set<std::string> excluded;
  for (const auto& e : tested.spec["excludes"]) excluded.insert(e.get<std::string>());
  for (const auto& o : all)
    for (const auto& e : o.spec["excludes"])
      if (e == tested.name()) excluded.insert(o.name());
  // Set the tested option (replacing the base's value), add what it needs.
  std::vector<std::pair<std::string, std::vector<std::string>>> chosen;
  for (const auto& [name, values] : base)
    if (name != tested.name() && !excluded.count(name)) chosen.push_back({name, values});
  chosen.push_back(
      {tested.name(), value ? std::vector<std::string>{*value} : std::vector<std::string>{}});
  std::vector<std::string> needs;
  for (const auto& n : tested.spec["needs"]) needs.push_back(n);
  if (tested.flag())
    for (const auto& o : all)
      for (const auto& n : o.spec["needs"])
        if (n == tested.name()) needs.push_back(o.name());
  for (const auto& n : needs) {
    if (std::any_of(chosen.begin(), chosen.end(), [&](auto& c) { return c.first == n; })) continue;
    const Option* o = find_option(all, n);
    const auto v = o ? legal_value(*o, place) : std::nullopt;
    if (!v) {
      problem = tested.command + " " + tested.name() + " needs " + n + ", with no legal value";
      return {};
    }
    chosen.push_back({n, o->flag() ? std::vector<std::string>{} : std::vector<std::string>{*v}});
  }
  // A required positional the base lacks: its fixture.
  for (const auto& o : all)
    if (o.positional() && o.spec["required"].get<bool>() &&
        std::none_of(chosen.begin(), chosen.end(), [&](auto& c) { return c.first == o.name(); })) {
      const auto f = positional_fixtures().find(o.name());
      if (f == positional_fixtures().end()) {
        problem = command + ": required " + o.name() + " has no base value";
        return {};
      }
      chosen.push_back({o.name(), {f->second}});
    }
  // Positionals first, in the tree's order; then options.
  for (const auto& o : all)
    if (o.positional())
      for (const auto& [name, values] : chosen)
        if (name == o.name())
          for (const auto& v : values) args.push_back(fill(v, place));
  for (const auto& [name, values] : chosen) {
    const Option* o = find_option(all, name);
    if (o && o->positional()) continue;
    if (values.empty()) {
      args.push_back(name);
    } else {
      for (const auto& v : values) {
        // "--opt=value": a value that starts with '-' (-1) stays the value.
        args.push_back(name + "=" + fill(v, place));
      }
    }
  }
  return args;
}

struct Verdict {
  bool ok = true;
  std::string why;
};

Verdict judge(const Case& c, const doorbell::test::RunResult& r) {
  const std::string what = fmt::format("{} {} {}: ", c.command, c.option, c.value_shown);
  if (r.timed_out) return {false, what + "hung (timed out)"};
  if (!r.status.exited()) return {false, what + "died: " + r.status.describe()};
  std::string err = r.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
  auto one_line_naming = [&]() -> std::string {
    if (err.empty()) return "no message";
    if (err.find('\n') != std::string::npos) return "more than one line: " + shown(r.err);
    std::string name = c.option;
    if (name.rfind("--", 0) != 0) {  // a positional: its name or the value
      auto lower = [](std::string s) {
        for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return s;
      };
      if (lower(err).find(lower(name)) != std::string::npos) return {};
      if (!c.value.text.empty() && err.find(c.value.text) != std::string::npos) return {};
      return "does not name " + name + ": " + shown(err);
    }
    if (err.find(name) == std::string::npos) return "does not name " + name + ": " + shown(err);
    return {};
  };
  const int code = r.status.exit_code();
  switch (c.value.expect) {
    case Expect::legal:
      if (code != 0)
        return {false, what + "a legal value, " + r.status.describe() + ": " + shown(err)};
      if (!c.value.made.empty() && !fs::exists(c.value.made))
        return {false, what + "exit 0 but " + shown(c.value.made) + " was not written"};
      if (c.value.to_stdout && r.out.empty()) return {false, what + "exit 0 but nothing on stdout"};
      return {};
    case Expect::illegal:
      if (code == 0) return {false, what + "an illegal value, yet exit 0"};
      if (code != 1 && code != 2) return {false, what + r.status.describe()};
      if (auto why = one_line_naming(); !why.empty()) return {false, what + why};
      return {};
    case Expect::either:
      if (code == 0) return {};
      if (code != 1 && code != 2) return {false, what + r.status.describe()};
      if (auto why = one_line_naming(); !why.empty()) return {false, what + why};
      return {};
  }
  return {};
}

// ------------------------------------------------------------ the runner

std::string fixtures_dir() {
  static const std::string dir = [] {
    char pattern[] = "/tmp/doorbell-battery-XXXXXX";
    const char* d = ::mkdtemp(pattern);
    if (d == nullptr) std::abort();
    std::ofstream(std::string(d) + "/schedule.toml")
        << "major_frame_ms = 5\n"
        << "[[partition]]\nname = \"A\"\ncommand = [\"/bin/sleep\", \"30\"]\n"
        << "[[partition]]\nname = \"B\"\ncommand = [\"/bin/sleep\", \"30\"]\n"
        << "[[window]]\npartition = \"A\"\noffset_ms = 0\nduration_ms = 2\n"
        << "[[window]]\npartition = \"B\"\noffset_ms = 2.5\nduration_ms = 2\n";
    std::ofstream(std::string(d) + "/a-file") << "x\n";
    return std::string(d);
  }();
  // Removed when the test process ends (each TEST is a process of its own).
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(dir, ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

// Runs every case of the commands `select` picks, a few at a time; returns
// how many ran. Fails (with every disagreeing case) unless all pass.
std::size_t run_battery(const std::function<bool(const std::string&)>& select) {
  EXPECT_TRUE(tree().is_object()) << "doorbell --dump-cli-tree gave no tree";
  const std::string fixtures = fixtures_dir();
  std::vector<Case> cases;
  std::vector<std::string> problems;
  std::size_t serial = 0;
  for (const auto& [path, node] : commands()) {
    if (!select(path)) continue;
    if (!bases().count(path)) {
      problems.push_back("command '" + path + "' has no base in tests/cli_battery_test.cpp");
      continue;
    }
    std::vector<Option> options;
    for (const auto& spec : (*node)["options"]) options.push_back({path, spec});
    for (const auto& o : options) {
      if (o.name() == "--help" || o.name() == "--version" || o.name() == "--help-all") {
        // Each prints and exits 0, alone.
        std::vector<std::string> args;
        std::istringstream words(path);
        for (std::string w; words >> w;) args.push_back(w);
        args.push_back(o.name());
        cases.push_back({path,
                         o.name(),
                         "(flag)",
                         args,
                         {"", Expect::legal},
                         fmt::format("{}/case-{}", fixtures, serial++)});
        continue;
      }
      std::string problem;
      std::vector<Value> values;
      if (o.flag())
        values.push_back({"", Expect::legal});
      else
        values = values_for(o, problem);
      // A file read: its base or fixture value is the legal one.
      if (o.type() == "FILE") {
        for (const auto& [name, given] : bases().at(path))
          if (name == o.name() && !given.empty()) values.push_back({given[0], Expect::legal});
        if (const auto f = positional_fixtures().find(o.name()); f != positional_fixtures().end())
          values.push_back({f->second, Expect::legal});
      }
      if (!problem.empty()) problems.push_back(problem);
      for (const auto& v : values) {
        Case c;
        c.command = path;
        c.option = o.name();
        c.dir = fmt::format("{}/case-{}", fixtures, serial++);
        Place place{c.dir, fixtures};
        c.value = v;
        c.value.text = fill(v.text, place);
        c.value.made = fill(v.made, place);
        c.value_shown = o.flag() ? "(flag)" : shown(c.value.text);
        std::string why;
        c.args = command_line(path, options, o,
                              o.flag() ? std::nullopt : std::optional<std::string>(c.value.text),
                              place, why);
        if (!why.empty()) {
          problems.push_back(why);
          continue;
        }
        cases.push_back(std::move(c));
      }
    }
  }
  for (const auto& p : problems) ADD_FAILURE() << p;

  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::vector<std::string> failures;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < cases.size();) {
      const Case& c = cases[i];
      fs::create_directories(c.dir);
      std::error_code ec;
      fs::copy_file(kSource + "/docs/guide.md", c.dir + "/guide.md", ec);
      const auto r = doorbell::test::run_doorbell(c.args, {.timeout = 60s});
      const Verdict v = judge(c, r);
      if (std::getenv("DOORBELL_BATTERY_LIST") != nullptr) {
        std::string line;
        for (const auto& a : c.args) line += " " + shown(a);
        std::lock_guard lock(mutex);
        std::cout << fmt::format("  [{}] exit {}:{}\n", v.ok ? "ok" : "FAIL",
                                 r.timed_out ? "timeout" : r.status.describe(), line);
      }
      if (!v.ok) {
        std::string line;
        for (const auto& a : c.args) line += " " + shown(a);
        std::lock_guard lock(mutex);
        failures.push_back(v.why + "\n    doorbell" + line);
      }
      fs::remove_all(c.dir, ec);
    }
  };
  // A small pool: most cases are refused at parse time in milliseconds.
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
  std::cout << fmt::format("CliBattery: {} option-value cases ran, {} failed\n", cases.size(),
                           failures.size());
  return cases.size();
}

bool top(const std::string& path, const std::string& command) {
  return path == command || path.rfind(command + " ", 0) == 0;
}

// The commands with a test of their own below; the rest go to Others.
const std::vector<std::string> kOwnTests = {"bench", "report",  "guide",
                                            "trace", "inspect", "partition"};

TEST(CliBattery, EveryCommandHasABase) {
  ASSERT_TRUE(tree().is_object());
  std::size_t options = 0;
  for (const auto& [path, node] : commands()) {
    EXPECT_TRUE(bases().count(path))
        << "command '" << path << "': give it a quick base in tests/cli_battery_test.cpp";
    options += (*node)["options"].size();
  }
  std::cout << fmt::format("CliBattery: {} commands, {} options in the tree\n", commands().size(),
                           options);
  EXPECT_GT(options, 40u);
}

TEST(CliBattery, Bench) {
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "bench"); }), 0u);
}
TEST(CliBattery, Report) {
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "report"); }), 0u);
}
TEST(CliBattery, Guide) {
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "guide"); }), 0u);
}
TEST(CliBattery, Trace) {
  if (::geteuid() != 0) GTEST_SKIP() << "doorbell trace needs root (tracefs)";
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "trace"); }), 0u);
}
TEST(CliBattery, Inspect) {
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "inspect"); }), 0u);
}
TEST(CliBattery, Partition) {
  EXPECT_GT(run_battery([](const std::string& p) { return top(p, "partition"); }), 0u);
}
// The top level, help, completion, and any command added later.
TEST(CliBattery, Others) {
  EXPECT_GT(run_battery([](const std::string& p) {
              for (const auto& c : kOwnTests)
                if (top(p, c)) return false;
              return true;
            }),
            0u);
}

// The docs name every option of their command in its synopsis or text, and
// the defaults they quote are the binary's (partition.md's synopsis lacked
// --max-handover-us; trace.md said the storm default was 100,000).
TEST(CliBattery, DocsNameEveryOption) {
  ASSERT_TRUE(tree().is_object());
  auto read = [](const std::string& p) {
    std::ifstream in(kSource + "/" + p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::map<std::string, std::string> docs = {{"trace", "docs/trace.md"},
                                                   {"inspect", "docs/inspect.md"},
                                                   {"partition run", "docs/partition.md"}};
  for (const auto& [path, node] : commands()) {
    const auto doc = docs.find(path);
    if (doc == docs.end()) continue;
    std::string text = read(doc->second);
    if (path == "partition run") {
      // The synopsis block.
      const auto start = text.find("doorbell partition run SCHEDULE.toml [");
      ASSERT_NE(start, std::string::npos);
      text = text.substr(start, text.find("```", start) - start);
    }
    for (const auto& o : (*node)["options"]) {
      const std::string name = o["name"];
      if (o["positional"] || name == "--help" || name == "--version") continue;
      EXPECT_NE(text.find(name), std::string::npos) << doc->second << " does not name " << name;
    }
  }
  // Quoted defaults: trace's storm.
  for (const auto& [path, node] : commands())
    if (path == "trace")
      for (const auto& o : (*node)["options"])
        if (o["name"] == "--storm-signals") {
          const long d = std::stol(o["default"].get<std::string>());
          const std::string with_commas = fmt::format("{},{:03}", d / 1000, d % 1000);
          EXPECT_NE(read("docs/trace.md").find(with_commas + " per run by default"),
                    std::string::npos)
              << "docs/trace.md should quote the default " << with_commas;
        }
}

}  // namespace
