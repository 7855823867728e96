//! Integration tests of tool-sdk; the tests are the `[[test]]` targets beside this file.
