// SPDX-License-Identifier: MIT
// Every kernel that op_list.inc says sums at a reduction site (DT_SITE) has a tester entry, and
// every entry names such a kernel: a kernel added to the table with a site but without an entry
// fails here, with the file to write.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/kernels/modes/modes_devices.h"
#include "tests/kernels/modes/op_modes_tester.h"

namespace dt::test {
namespace {

struct SiteRow {
    const char* kernel;
    const char* site;
};
constexpr SiteRow kSiteRows[] = {
#define DT_SITE(entry, site) {#entry, site},
#include "kernels/op_list.inc"
};

TEST(ModesEntries, EveryKernelWithASiteHasOne) {
    std::set<std::string> entries;
    for (const ModesEntry& e : modes_entries()) entries.insert(e.kernel);
    for (const SiteRow& row : kSiteRows)
        EXPECT_TRUE(entries.count(row.kernel))
            << row.kernel << " sums at site " << row.site
            << " (kernels/op_list.inc) but the accumulation-mode tester has no entry for it: "
               "write tests/kernels/modes/"
            << row.kernel
            << "_entry.cpp (bias_add_backward_entry.cpp shows one) and list it in "
               "modes_devices.cpp";
}

TEST(ModesEntries, EveryEntryNamesAKernelWithASite) {
    std::set<std::string> kernels;
    for (const SiteRow& row : kSiteRows) kernels.insert(row.kernel);
    for (const ModesEntry& e : modes_entries())
        EXPECT_TRUE(kernels.count(e.kernel))
            << "entry " << e.kernel << " names no DT_SITE row of kernels/op_list.inc";
}

}  // namespace
}  // namespace dt::test
