// Package model is a fixture: the layer above backend.
package model
