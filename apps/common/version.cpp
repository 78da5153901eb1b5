// SPDX-License-Identifier: MIT
#include "apps/common/version.h"

namespace dt {

const char* version_string() { return "0.1.0"; }

}  // namespace dt
