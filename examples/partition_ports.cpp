// Two partitions that talk through ports (include/doorbell/partition_ports.h):
// "sensor" writes telemetry to a sampling port and obeys commands from a
// queuing port; "control" reads the telemetry and sends commands.
//
//   doorbell partition run examples/schedules/ports.toml --frames 50
//
// Each is a command partition of examples/schedules/ports.toml: the scheduler
// hands it the port memory (DOORBELL_PORTS_FD, DOORBELL_PARTITION).
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "doorbell/partition_ports.h"

namespace dp = doorbell::partition;

namespace {

std::span<const std::byte> bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

void pause_1ms() {
  const timespec ms{0, 1'000'000};
  ::nanosleep(&ms, nullptr);
}

int sensor(const dp::Ports& ports) {
  auto telemetry = ports.sampling("telemetry");
  auto commands = ports.queuing("commands");
  std::vector<std::byte> buffer(commands.message_size());
  double temperature = 20.0, heater = 0.0;
  for (long tick = 0;; ++tick) {
    for (;;) {  // every command waiting, without blocking
      const dp::QueuingReceive r = commands.receive(buffer);
      if (r.status != dp::PortStatus::ok) break;
      const std::string command(reinterpret_cast<const char*>(buffer.data()), r.size);
      heater = command == "heat" ? 1.0 : 0.0;
      std::printf("sensor: command '%s'\n", command.c_str());
    }
    temperature += heater * 0.05 - 0.02;
    (void)telemetry.write(bytes(std::to_string(temperature)));
    pause_1ms();
  }
}

int control(const dp::Ports& ports) {
  auto telemetry = ports.sampling("telemetry");
  auto commands = ports.queuing("commands");
  std::vector<std::byte> buffer(telemetry.message_size());
  std::string last;
  for (;;) {
    const dp::SamplingRead r = telemetry.read(buffer);
    if (r.status == dp::PortStatus::ok) {
      const double t = std::strtod(
          std::string(reinterpret_cast<const char*>(buffer.data()), r.size).c_str(), nullptr);
      const std::string want = t < 19.5 ? "heat" : t > 20.5 ? "cool" : last;
      std::printf("control: %.2f C (message %llu, %s, %.1f ms old)\n", t,
                  static_cast<unsigned long long>(r.sequence), r.valid ? "valid" : "STALE",
                  r.age_ns / 1e6);
      if (want != last && commands.send(bytes(want)) == dp::PortStatus::ok) last = want;
    }
    for (int i = 0; i < 5; ++i) pause_1ms();
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc != 2 || (std::strcmp(argv[1], "sensor") != 0 && std::strcmp(argv[1], "control") != 0)) {
    std::fprintf(stderr, "usage: %s sensor|control (as a partition of a schedule)\n", argv[0]);
    return 2;
  }
  try {
    const dp::Ports ports = dp::Ports::from_environment();
    return std::strcmp(argv[1], "sensor") == 0 ? sensor(ports) : control(ports);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 1;
  }
}
