// Empty: the fixture is only configured, never built.
