"""The package version, in a module of its own: stages that stamp it (the build manifest, the server) import it
without reaching back into the package root."""

__version__ = "0.1.0"
