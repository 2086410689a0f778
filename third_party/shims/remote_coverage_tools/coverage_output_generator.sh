#!/bin/sh
echo "journalkv: coverage is not supported by the offline Bazel shim" >&2
exit 1
