"""The network model: the fast engine's step (received powers, links, service, power, UE
movement) on (station, UE) arrays, and the service arithmetic the rules and references share
with it. The agents' views of it (observations, turns, env runners, wrappers) are mobrl.envs."""
