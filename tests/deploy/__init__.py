"""Tests of the course's hub set-ups: ``deploy/jupyterhub/`` and ``deploy/zero-to-jupyterhub/``."""
