"""The exceptions of `metamodels`: catch `MetamodelError` for any of them."""

from __future__ import annotations


class MetamodelError(Exception):
    """Base of every error raised by the learning code."""


class ModelFormatError(MetamodelError, ValueError):
    """A serialised model or configuration is malformed, of an unknown version, or inconsistent."""


class FeatureSpaceMismatch(MetamodelError, ValueError):
    """Features made with one FeatureConfig were given to a model built on another."""


class TrainingDataError(MetamodelError, ValueError):
    """The training documents cannot produce a model (for instance a class without examples)."""


class MetaInputError(MetamodelError, ValueError):
    """Inputs to a restrictive or meta method (decisions, weights, thresholds, probabilities) are bad."""


class ClusteringError(MetamodelError, ValueError):
    """Documents, labelings or settings a clustering or meta-clustering step cannot work with."""
