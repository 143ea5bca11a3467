// kinetrace's libkineto-compatible API: child profilers (framework-defined event sources).
//
// kinetrace does not run child profilers: addChildActivityProfiler() keeps them, unused, and
// says so once. Only the destructor is called on them.
#pragma once

namespace libkineto {

class IActivityProfiler {
 public:
  virtual ~IActivityProfiler() = default;
};

}  // namespace libkineto
