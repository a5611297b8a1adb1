"""The monitor's side of the in-process agent: discovering agent sockets (also inside
containers), bounded connections, pulling items with a cursor (agent_client), checking
every untrusted value an agent sends (agent_input, agent_modules, allocator_input,
sites_reply) and turning them into the AgentReports the stream carries, each attached
to its process (agent_matching). May import the standard library, the wire protocol in
vramscope.agent.protocol, vramscope.core and the cross-cutting modules at the top of
vramscope.sources; never Qt, never torch.
"""
