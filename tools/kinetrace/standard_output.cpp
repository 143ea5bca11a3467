#include "standard_output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kinetrace/error.h"
#include "output/chrome_json_sink.h"

namespace kinetrace::cli {

void DescriptorOutput::write(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd_, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("cannot write to standard output: ") + std::strerror(errno));
    }
    data += written;
    size -= static_cast<std::size_t>(written);
  }
}

std::unique_ptr<Sink> openTraceOutput(const std::string& output) {
  if (!isStandardOutput(output)) return openSink(output);
  return std::make_unique<detail::ChromeJsonSink>(
      std::make_unique<DescriptorOutput>(STDOUT_FILENO));
}

}  // namespace kinetrace::cli
