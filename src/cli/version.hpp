// The version --version prints, fixed at configure time (cmake/version.cmake): the project
// version, plus `git describe` when built from a git checkout.
#pragma once

namespace redlock {

const char* version();

}  // namespace redlock
