"""The agents' views of the network: the factory RLlib workers call, observations, turns, env
runners and the wrappers that adapt each scenario kind. The network model they view is
mobrl.network."""
