// The host suites need no GPU: they always run (main() is in catch_impl.cpp).
int cufuse_test_precheck() { return 0; }
