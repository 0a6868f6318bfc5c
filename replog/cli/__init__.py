from replog.rpc.transport import choose_transport

choose_transport()  # before grpc is imported: the CLI's clients and benches use the transport the services do
