#include "kinetrace/profiler.h"

#include "session/session.h"

namespace kinetrace {

Profiler::Profiler(Config config) : session_(std::make_unique<detail::Session>(std::move(config))) {}
Profiler::Profiler(std::unique_ptr<detail::Session> session) : session_(std::move(session)) {}
Profiler::~Profiler() = default;

void Profiler::prepare() { session_->prepare(); }
void Profiler::start() { session_->start(session_->config().output); }
void Profiler::start(const std::string& output) { session_->start(output); }
Trace Profiler::stop() { return session_->stop(); }
void Profiler::addMetadata(const std::string& key, Value value) { session_->addMetadata(key, std::move(value)); }
bool Profiler::recording() const { return session_->recording(); }
std::string Profiler::gpuStatus() const { return session_->gpuStatus(); }
const Config& Profiler::config() const { return session_->config(); }

}  // namespace kinetrace
