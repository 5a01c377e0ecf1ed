"""Test services: real backend servers started on free ports in temp dirs."""
