from django.urls import path

from customers import views

urlpatterns = [
    path("events", views.UsageEventListApi.as_view()),
    path("events/map-model", views.ModelMapApi.as_view()),
]
