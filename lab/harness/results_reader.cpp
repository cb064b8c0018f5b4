#include "lab/harness/results_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lab/harness/histogram.h"
#include "lab/harness/results.h"

namespace doorbell::lab {
namespace {

using nlohmann::json;

// The JSON type of a value, as a message says it.
const char* type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "a number";
    default:
      return "something else";
  }
}

// Reads the fields of one JSON object, naming each in its errors by its
// path from the top ("scenario 3 (\"ladder/x\"): metrics.latency.p50").
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object())
      fail("", fmt::format("expected an object, got {}", type_name(object_)));
  }

  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    const std::string at = key.empty() ? where_ : path(key);
    throw ResultsError(at.empty() ? what : at + ": " + what);
  }

  const json* find(std::string_view key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  std::string path(std::string_view key) const {
    return where_.empty() ? std::string(key) : where_ + "." + std::string(key);
  }

  // A string; `fallback` when absent.
  std::string text(std::string_view key, std::string fallback = {}) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(key, fmt::format("expected a string, got {}", type_name(*v)));
    return v->get<std::string>();
  }

  // A number or null (NaN); NaN when absent.
  double number(std::string_view key) const {
    const json* v = find(key);
    if (!v || v->is_null()) return kNotMeasured;
    if (!v->is_number()) fail(key, fmt::format("expected a number, got {}", type_name(*v)));
    return v->get<double>();
  }

  bool boolean(std::string_view key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, fmt::format("expected true or false, got {}", type_name(*v)));
    return v->get<bool>();
  }

  // An object member or array member, checked for its type; nullptr when absent.
  const json* object(std::string_view key) const { return typed(key, json::value_t::object); }
  const json* array(std::string_view key) const { return typed(key, json::value_t::array); }

 private:
  const json* typed(std::string_view key, json::value_t type) const {
    const json* v = find(key);
    if (!v) return nullptr;
    if (v->type() != type)
      fail(key,
           fmt::format("expected {}, got {}",
                       type == json::value_t::object ? "an object" : "an array", type_name(*v)));
    return v;
  }

  const json& object_;
  std::string where_;
};

// A value shown as text: strings as written, numbers and booleans as JSON
// writes them, arrays joined with ", ".
std::string value_text(const json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_array()) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out += ", ";
      out += value_text(v[i], fmt::format("{}[{}]", where, i));
    }
    return out;
  }
  if (v.is_object())
    throw ResultsError(where + ": expected a string, number or array, got an object");
  return v.dump();
}

std::vector<std::pair<std::string, std::string>> text_map(const json& object,
                                                          const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : object.items())
    out.emplace_back(key, value_text(value, where + "." + key));
  return out;
}

std::vector<double> numbers(const json& array, const std::string& where) {
  std::vector<double> out;
  out.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    const json& v = array[i];
    if (v.is_null()) {
      out.push_back(kNotMeasured);
      continue;
    }
    if (!v.is_number())
      throw ResultsError(fmt::format("{}[{}]: expected a number, got {}", where, i, type_name(v)));
    out.push_back(v.get<double>());
  }
  return out;
}

SpreadRecord read_spread(const Fields& parent, std::string_view key) {
  SpreadRecord s;
  const json* v = parent.object(key);
  if (!v) return s;
  Fields f(*v, parent.path(key));
  s.min = f.number("min");
  s.median = f.number("median");
  s.max = f.number("max");
  return s;
}

SummaryRecord read_summary(const Fields& f) {
  SummaryRecord s;
  s.count = f.number("count");
  s.min = f.number("min");
  s.max = f.number("max");
  s.mean = f.number("mean");
  s.stddev = f.number("stddev");
  s.p50 = f.number("p50");
  s.p90 = f.number("p90");
  s.p99 = f.number("p99");
  s.p999 = f.number("p99.9");
  return s;
}

MetricRecord read_metric(const std::string& name, const json& value, const std::string& where) {
  Fields f(value, where);
  MetricRecord m;
  m.name = name;
  m.unit = f.text("unit", "ns");
  m.summary = read_summary(f);
  m.p50_across_reps = read_spread(f, "p50_across_reps");
  m.mean_across_reps = read_spread(f, "mean_across_reps");
  if (const json* reps = f.array("per_repetition"))
    for (std::size_t i = 0; i < reps->size(); ++i)
      m.per_repetition.push_back(
          read_summary(Fields((*reps)[i], fmt::format("{}[{}]", f.path("per_repetition"), i))));
  if (const json* buckets = f.array("histogram"))
    for (std::size_t i = 0; i < buckets->size(); ++i) {
      const std::string at = fmt::format("{}[{}]", f.path("histogram"), i);
      const json& b = (*buckets)[i];
      if (!b.is_array() || b.size() != 3)
        throw ResultsError(at + ": expected [lower_ns, upper_ns, count]");
      std::vector<double> v = numbers(b, at);
      m.histogram.push_back({v[0], v[1], v[2]});
    }
  if (const json* raw = f.array("raw")) m.raw = numbers(*raw, f.path("raw"));
  return m;
}

// An array of strings, empty when absent.
std::vector<std::string> strings(const Fields& f, const char* key) {
  std::vector<std::string> out;
  if (const json* items = f.array(key))
    for (std::size_t i = 0; i < items->size(); ++i) {
      const json& n = (*items)[i];
      if (!n.is_string())
        throw ResultsError(
            fmt::format("{}[{}]: expected a string, got {}", f.path(key), i, type_name(n)));
      out.push_back(n.get<std::string>());
    }
  return out;
}

ScenarioStatus read_status(const Fields& f) {
  const std::string s = f.text("status", "ok");
  if (s == "ok") return ScenarioStatus::ok;
  if (s == "skipped") return ScenarioStatus::skipped;
  if (s == "failed") return ScenarioStatus::failed;
  f.fail("status", "expected \"ok\", \"skipped\" or \"failed\", got \"" + s + "\"");
}

ScenarioRecord read_scenario(const json& value, std::size_t index) {
  std::string where = fmt::format("scenarios[{}]", index);
  if (value.is_object())
    if (auto it = value.find("name"); it != value.end() && it->is_string())
      where += " (\"" + it->get<std::string>() + "\")";
  Fields f(value, where);
  ScenarioRecord s;
  if (!f.find("name")) f.fail("name", "missing (every scenario has a name)");
  s.name = f.text("name");
  s.group = f.text("group", s.name.substr(0, s.name.find('/')));
  s.title = f.text("title");
  s.description = f.text("description");
  if (const json* params = f.object("params")) s.params = text_map(*params, f.path("params"));
  s.clock = f.text("clock");
  s.clock_read_ns = f.number("clock_read_ns");
  s.pinning = f.text("pinning");
  s.status = read_status(f);
  s.reason = f.text("reason");
  s.repetitions = f.number("repetitions");
  s.wall_s = f.number("wall_s");
  s.primary_metric = f.text("primary_metric", "latency");
  if (const json* metrics = f.object("metrics"))
    for (const auto& [name, m] : metrics->items())
      s.metrics.push_back(read_metric(name, m, f.path("metrics") + "." + name));
  if (const json* counters = f.object("counters"))
    for (const auto& [name, c] : counters->items()) {
      Fields cf(c, f.path("counters") + "." + name);
      CounterRecord counter;
      counter.name = name;
      if (const json* reps = cf.array("per_repetition"))
        counter.per_repetition = numbers(*reps, cf.path("per_repetition"));
      counter.spread.min = cf.number("min");
      counter.spread.median = cf.number("median");
      counter.spread.max = cf.number("max");
      s.counters.push_back(std::move(counter));
    }
  s.notes = strings(f, "notes");
  s.warnings = strings(f, "warnings");
  s.budget_s = f.number("budget_s");
  s.limit_s = f.number("limit_s");
  if (const json* failure = f.object("failure")) {
    Fields ff(*failure, f.path("failure"));
    s.failure_kind = ff.text("kind");
    s.failure_phase = ff.text("phase");
    s.failure_elapsed_s = ff.number("elapsed_s");
  }
  return s;
}

RatioRecord read_ratio(const json& value, std::size_t index) {
  Fields f(value, fmt::format("ratios[{}]", index));
  RatioRecord r;
  r.name = f.text("name");
  r.numerator = f.text("numerator");
  r.denominator = f.text("denominator");
  r.statistic = f.text("statistic");
  r.value = f.number("value");
  r.available = f.boolean("available", std::isfinite(r.value));
  r.reference = f.number("reference");
  r.reference_source = f.text("reference_source");
  r.versus_reference = f.number("versus_reference");
  r.meaning = f.text("meaning");
  r.why = f.text("why");
  r.metric = f.text("metric");
  r.numerator_metric = f.text("numerator_metric");
  r.has_flags = f.find("flags") != nullptr;
  r.flags = strings(f, "flags");
  return r;
}

ReferenceRecord read_reference(const json& value, std::size_t index) {
  Fields f(value, fmt::format("references[{}]", index));
  ReferenceRecord r;
  r.scenario = f.text("scenario");
  r.what = f.text("what");
  r.statistic = f.text("statistic");
  r.source = f.text("source");
  r.value_ns = f.number("value_ns");
  r.ours_ns = f.number("ours_ns");
  r.metric = f.text("metric");
  r.why = f.text("why");
  r.has_flags = f.find("flags") != nullptr;
  r.flags = strings(f, "flags");
  return r;
}

// figure_flags (histogram.h) of statistic of metric (empty: the primary one)
// of the scenario named `name` in the file; nothing when it is absent or has
// no such metric.
std::vector<std::string> flags_in_file(const ResultsFile& file, const std::string& name,
                                       const std::string& metric, const std::string& statistic) {
  const ScenarioRecord* s = file.find(name);
  if (s == nullptr || !s->ok()) return {};
  const MetricRecord* m = metric.empty() ? s->primary() : s->metric(metric);
  if (m == nullptr) return {};
  return figure_flags(s->name, m->name, statistic, m->summary.count, s->warnings);
}

// Files written before the writer wrote "flags" get them by the writer's
// rule, from the counts and warnings the file has.
void derive_missing_flags(ResultsFile& file) {
  for (auto& r : file.ratios) {
    if (r.has_flags || !r.available) continue;
    r.flags = flags_in_file(
        file, r.numerator, r.numerator_metric.empty() ? r.metric : r.numerator_metric, r.statistic);
    for (auto& flag : flags_in_file(file, r.denominator, r.metric, r.statistic))
      if (std::find(r.flags.begin(), r.flags.end(), flag) == r.flags.end())
        r.flags.push_back(std::move(flag));
  }
  for (auto& r : file.references)
    if (!r.has_flags && std::isfinite(r.ours_ns))
      r.flags = flags_in_file(file, r.scenario, r.metric, r.statistic);
}

ResultsFile read_document(const json& document) {
  if (!document.is_object())
    throw ResultsError(fmt::format("results are not a JSON object (got {})", type_name(document)));
  Fields f(document, "");
  const json* schema = f.find("schema");
  if (!schema || !schema->is_string() || schema->get<std::string>() != kResultsSchema)
    throw ResultsError(
        fmt::format("not a doorbell results file (schema is not \"{}\")", kResultsSchema));
  const json* version = f.find("schema_version");
  if (!version || !version->is_number_integer() ||
      version->get<long long>() != kResultsSchemaVersion)
    throw ResultsError(fmt::format("unsupported schema_version {} (this doorbell reads version {})",
                                   version ? version->dump() : std::string("(missing)"),
                                   kResultsSchemaVersion));
  ResultsFile r;
  r.schema_version = kResultsSchemaVersion;
  r.doorbell_version = f.text("doorbell_version");
  r.wall_s = f.number("wall_s");
  if (const json* env = f.object("environment")) r.environment = text_map(*env, "environment");
  if (const json* options = f.object("options")) {
    Fields o(*options, "options");
    r.has_options = true;
    r.options.suite = o.text("suite");
    r.options.quick = o.boolean("quick", false);
    r.options.repetitions = o.number("repetitions");
    if (const json* filters = o.array("filters"))
      for (std::size_t i = 0; i < filters->size(); ++i) {
        const json& v = (*filters)[i];
        if (!v.is_string())
          throw ResultsError(
              fmt::format("options.filters[{}]: expected a string, got {}", i, type_name(v)));
        r.options.filters.push_back(v.get<std::string>());
      }
    r.options.json = options->dump();
  }
  const json* scenarios = f.find("scenarios");
  if (!scenarios || !scenarios->is_array())
    throw ResultsError("results have no \"scenarios\" array");
  for (std::size_t i = 0; i < scenarios->size(); ++i)
    r.scenarios.push_back(read_scenario((*scenarios)[i], i));
  if (const json* ratios = f.array("ratios"))
    for (std::size_t i = 0; i < ratios->size(); ++i)
      r.ratios.push_back(read_ratio((*ratios)[i], i));
  if (const json* references = f.array("references"))
    for (std::size_t i = 0; i < references->size(); ++i)
      r.references.push_back(read_reference((*references)[i], i));
  derive_missing_flags(r);
  return r;
}

}  // namespace

double SummaryRecord::statistic(std::string_view name) const noexcept {
  if (name == "p50") return p50;
  if (name == "p90") return p90;
  if (name == "p99") return p99;
  if (name == "p99.9") return p999;
  if (name == "mean") return mean;
  if (name == "max") return max;
  if (name == "min") return min;
  if (name == "stddev") return stddev;
  if (name == "count") return count;
  return kNotMeasured;
}

const char* status_name(ScenarioStatus status) noexcept {
  switch (status) {
    case ScenarioStatus::ok:
      return "ok";
    case ScenarioStatus::skipped:
      return "skipped";
    case ScenarioStatus::failed:
      return "failed";
  }
  return "failed";
}

std::vector<std::string> MetricRecord::unsupported_percentiles() const {
  return lab::unsupported_percentiles(summary.count);
}

const MetricRecord* ScenarioRecord::metric(std::string_view metric_name) const noexcept {
  for (const auto& m : metrics)
    if (m.name == metric_name) return &m;
  return nullptr;
}

const MetricRecord* ScenarioRecord::primary() const noexcept {
  return metric(primary_metric);
}

std::string ScenarioRecord::param(std::string_view param_name) const {
  for (const auto& [k, v] : params)
    if (k == param_name) return v;
  return {};
}

const ScenarioRecord* ResultsFile::find(std::string_view name) const noexcept {
  for (const auto& s : scenarios)
    if (s.name == name) return &s;
  return nullptr;
}

std::string ResultsFile::environment_value(std::string_view key) const {
  for (const auto& [k, v] : environment)
    if (k == key) return v;
  return {};
}

const RatioRecord* ResultsFile::ratio(std::string_view name) const noexcept {
  for (const auto& r : ratios)
    if (r.name == name) return &r;
  return nullptr;
}

ResultsFile results_from_json(const nlohmann::json& document) {
  try {
    return read_document(document);
  } catch (const ResultsError&) {
    throw;
  } catch (const std::exception& e) {
    // A shape the checks above missed must still be a clean error.
    throw ResultsError(std::string("unreadable results: ") + e.what());
  }
}

ResultsFile parse_results(std::string_view json_text) {
  json document;
  try {
    document = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    throw ResultsError(std::string("not valid JSON: ") + e.what());
  }
  return results_from_json(document);
}

ResultsFile read_results_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ResultsError(path + ": cannot open: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ResultsError(path + ": cannot read: " + std::strerror(errno));
  try {
    return parse_results(text.str());
  } catch (const ResultsError& e) {
    throw ResultsError(path + ": " + e.what());
  }
}

}  // namespace doorbell::lab
