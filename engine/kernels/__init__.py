"""Our C++ CPU kernels (*.cpp, *.h here) and the Python side that builds and loads them."""
