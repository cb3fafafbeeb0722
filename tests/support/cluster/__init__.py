"""The test cluster: a Kubernetes API emulator on loopback (``emulator``, ``store``, ``schemas``) and the
stand-ins for what a real cluster runs beside it (``standin`` wires the operators, the kubelet, Kueue,
the Deployment controller, the prober and the pod network). ``cluster.Cluster`` starts both for a test."""
