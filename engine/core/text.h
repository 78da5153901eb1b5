// SPDX-License-Identifier: MIT
// Small text helpers shared by the apps and the engine's error messages.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace dt {

/// "a, b, c" for sep ", ".
inline std::string join_text(const std::vector<std::string>& parts, std::string_view sep = ", ") {
    std::string s;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) s += sep;
        s += parts[i];
    }
    return s;
}

/// Splits at every `sep`; "" gives one empty field, "a,,b" gives {"a", "", "b"}.
inline std::vector<std::string> split_text(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = text.find(sep, start);
        out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) return out;
        start = at + 1;
    }
}

}  // namespace dt
