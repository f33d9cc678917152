"""Importing models trained with the authors' code."""
