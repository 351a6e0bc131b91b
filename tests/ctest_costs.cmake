# Read by ctest after the tests gtest_discover_tests found (tests/CMakeLists.txt): the long tests
# get a cost, so that ctest -j starts them first and the short ones fill the other cores beside
# them. Without it (no cost data yet, as in a fresh build) ctest starts the tests in the order
# listed, and a two-minute test listed in the middle ends the run a minute after all the others.
# (ctest passes over a name it does not have: a build may leave a test's source out.)
set_tests_properties(RunFixtures.TheDefaultRunLogsTheSameLossesAsBefore PROPERTIES COST 1000)
