// SPDX-License-Identifier: MIT
#include "apps/version.h"

namespace dt {

const char* version_string() { return "0.1.0"; }

}  // namespace dt
