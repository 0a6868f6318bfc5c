"""Settings for the whole suite, made before any test module imports grpc."""

from replog.rpc.transport import keep_grpc_out_of_forks

# The suite's process holds gRPC channels to its clusters when PySpark forks it to start a JVM.
keep_grpc_out_of_forks()
