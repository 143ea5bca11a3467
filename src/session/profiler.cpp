#include "kinetrace/profiler.h"

#include "session/session.h"

namespace kinetrace {

Profiler::Profiler(Config config) : session_(std::make_unique<detail::Session>(std::move(config))) {}
Profiler::~Profiler() = default;

void Profiler::prepare() { session_->prepare(); }
void Profiler::start() { session_->start(); }
Trace Profiler::stop() { return session_->stop(); }
bool Profiler::recording() const { return session_->recording(); }
std::string Profiler::gpuStatus() const { return session_->gpuStatus(); }
const Config& Profiler::config() const { return session_->config(); }

}  // namespace kinetrace
