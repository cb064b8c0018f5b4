#include "lab/scenarios/instance_guard.h"

#include <fcntl.h>

#include <cerrno>
#include <system_error>

namespace doorbell::lab {

InstanceGuard::InstanceGuard(const sys::tracefs::Instance& instance) {
  const std::string dir = sys::tracefs::tracing_dir().path + "/instances";
  instances_dir_.reset(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!instances_dir_) throw std::system_error(errno, std::generic_category(), "open " + dir);
  guardian_ = detail::Guardian::start();
  guardian_.watch_directory(instances_dir_.get(), instance.name());
}

}  // namespace doorbell::lab
