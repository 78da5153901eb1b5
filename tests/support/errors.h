// SPDX-License-Identifier: MIT
// Checking thrown errors by their text: the message of the expected exception type, and an
// assertion that a message holds a part (both name what they got when they fail).
#pragma once
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

namespace dt::test {

// The message of the E thrown by f ("" and a failure when nothing or something else is thrown).
template <typename E>
std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type: " << e.what();
        return "";
    }
    ADD_FAILURE() << "nothing thrown";
    return "";
}

inline ::testing::AssertionResult has(const std::string& msg, const std::string& part) {
    if (msg.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "'" << part << "' not in message: " << msg;
}

}  // namespace dt::test
