// SPDX-License-Identifier: MIT
#pragma once

namespace dt {

/// detrain's version, as recorded in result.json.
const char* version_string();

}  // namespace dt
