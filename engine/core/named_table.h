// SPDX-License-Identifier: MIT
// Tables of entries with a `name` member (the data sets, the models, the study's variants): the
// one list a name is looked up in and the choices an error message lists are read from.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

/// The names of the table's entries, in table order.
template <class Entry, std::size_t N>
std::vector<std::string> names_of(const Entry (&table)[N]) {
    std::vector<std::string> names;
    names.reserve(N);
    for (const Entry& e : table) names.emplace_back(e.name);
    return names;
}

/// The entry named `name`, or nullptr.
template <class Entry, std::size_t N>
const Entry* find_named(const Entry (&table)[N], std::string_view name) {
    for (const Entry& e : table) {
        if (name == e.name) return &e;
    }
    return nullptr;
}

}  // namespace dt
