"""LogitSpec inside serving engines. Each engine's module imports its engine lazily, so
`import logitspec` (and this package) never loads one."""
